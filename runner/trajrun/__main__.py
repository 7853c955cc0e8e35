"""``python -m runner``: the same as the ``trajrun`` command."""

from .cli import main

main(prog_name="trajrun")
