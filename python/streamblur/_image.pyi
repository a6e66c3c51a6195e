# Type hints for streamblur._image, a private module (the image API). Its public names
# are streamblur's, typed in __init__.pyi, and re-exported from there.
# This stub keeps mypy and stubtest from type-checking the implementation, as
# __init__.pyi does for __init__.py; its private helpers are not typed.

from . import Chain as Chain, box_blur as box_blur, gaussian_blur as gaussian_blur
