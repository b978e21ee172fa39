"""``python -m dprec.cli``: the ``dprec`` command (what the service launcher starts)."""

from dprec.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    main()
