"""Model-specific compile recipes: how a model's stages are exported (the compile side; needs torch)."""
