"""Challenges (CONTRACT.md, "Challenges: boards with a start and an end";
docs/challenges.md): boards over a window of time that learners may have to
join, decided once with rewards by rank.

- `rules.py`: a challenge as a value, its definition's rules (pure);
- `definitions.py`: define, change, list, join, delete (`Challenges`);
- `standings.py`: its board, a learner's neighbourhood, a learner's challenges;
- `decision.py`: the decision at the end, and the live notifications;
- `erasure.py`: what an erasure asks of them.
"""
