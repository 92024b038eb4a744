"""`python -m finetasks_afr.cli`: the same entry as the `finetasks-afr` console script."""

from finetasks_afr.cli import main

if __name__ == "__main__":
    main()
