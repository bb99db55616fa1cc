"""Building the book and the learners' notebooks from `chapters/*.md`: the helpers a chapter
calls to glue numbers into its prose (`chapter`), the generator of `notebooks/*.ipynb`
(`notebooks`, `python -m gpumodel.book.notebooks`) and the Sphinx hook the site loads (`site`).

Add here: anything about how a chapter becomes a page or a notebook; nothing the model needs.
"""

from .._lazy import submodules

__getattr__ = submodules(__name__, __file__)
