"""`python -m laurels.cli`, as the `laurels` command."""

from laurels.cli import main

main()
