-- Defining (or retitling) and deleting a board kind are audited (issue 65,
-- point 8): the audit's actions gain kind_define and kind_delete.
ALTER TABLE audit DROP CONSTRAINT audit_action_check;
ALTER TABLE audit ADD CONSTRAINT audit_action_check CHECK (action IN (
    'void', 'restore', 'suspend', 'unsuspend', 'erase', 'rebuild', 'group_delete',
    'kind_define', 'kind_delete'));
