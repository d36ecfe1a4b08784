"""What users write in their code to steer armature: ``armature.disable``,
``allow_in_graph``/``disallow_in_graph`` marks, ``dont_skip_tracing`` and
``set_stance`` (``markers``), and ``armature.config.patch(...)`` blocks
(``config_patch``).

May import at module level: the core only.  The core is ``values.base``,
``values.constant``, ``values.builder`` (which imports the sub-packages only
inside functions) and ``values.kinds``.  Anything else is reached inside a
function, a value kind through ``values.kinds``.  This ``__init__`` imports
nothing, so importing the package costs nothing.
"""
