"""``python -m armature run [--report PATH] [--backend NAME] script.py [args]``
(or ``run -m module [args]``): see src/armature_runner/cli.py."""
import sys

from armature_runner.cli import main

if __name__ == "__main__":
    sys.exit(main())
