"""What users write in their code to steer armature: ``armature.disable``,
``allow_in_graph``/``disallow_in_graph`` marks, ``dont_skip_tracing`` and
``set_stance`` (``markers``), and ``armature.config.patch(...)`` blocks
(``config_patch``).

May import: the core (``values.base``, ``values.constant``,
``values.kinds``) at module level; other sub-packages only inside
functions.  Nothing is imported here: importing the package costs nothing.
"""
