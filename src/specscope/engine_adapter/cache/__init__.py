"""The state a model carries between forwards: exact rollback of every mlx-lm cache kind, the long-context
cache store, the tap on the trunk's hidden states that an MTP head drafts from."""
