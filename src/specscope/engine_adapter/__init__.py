"""Everything that touches MLX / mlx-lm. No Qt here."""
