"""``python -m armature cache list|clear`` (driver/persistent_cache.py), or
``python -m armature run [--report PATH] [--backend NAME] script.py [args]``
(or ``run -m module [args]``): see src/armature_runner/cli.py."""
import sys

from armature_runner.cli import main

if __name__ == "__main__":
    if sys.argv[1:2] == ["cache"]:   # python -m armature cache list|clear
        from armature.driver.persistent_cache import cli
        sys.exit(cli(sys.argv[2:]))
    sys.exit(main())
