"""The engine sharded across ranks (MLX distributed, mlx-lm's ``model.shard``): the rank group and its exchanges,
the sharded engine, its breakdown with communication as one more block."""
