"""Model-specific compile recipes: how a model's stages are exported (the compile side; needs torch)."""

from ..quiet_imports import import_torchao

import_torchao()  # before the recipes import transformers' models, which import torchao
