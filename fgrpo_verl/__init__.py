"""fgrpo-verl: focal-weighted group-relative policy optimisation (F-GRPO) as a verl plugin.

Importing this package does not import verl; the verl glue loads through the
``verl.plugins`` entry point (:mod:`fgrpo_verl.plugin`) when verl is imported.
"""

__version__ = "0.1.0"
