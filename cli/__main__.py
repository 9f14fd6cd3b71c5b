"""`python -m cli`: the `ledgerclaw` command, for environments without the console script."""

from cli.app import main

main()
