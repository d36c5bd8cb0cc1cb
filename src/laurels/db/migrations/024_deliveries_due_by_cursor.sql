-- Due deliveries by (next_attempt_at, id): each webhook worker claims from
-- where its last claim ended (webhooks.py), so a claim starts its index scan
-- past the entries of the deliveries already leased or delivered (dead until
-- vacuum) instead of stepping over all of them every time: with 200,000
-- waiting, claims from the start of the old index grew to thousands of
-- buffers each and three processes drained 254 a second together.
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, id)
    WHERE status = 'pending';
