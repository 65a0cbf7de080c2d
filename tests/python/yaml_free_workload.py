"""workloads/small.yaml written as a Python dict (the YAML's structure)."""


def small():
    return {
        "name": "small",
        "hardware": "tpuv3",
        "mesh": {"axes": {"x": 2, "y": 4}, "physical": [2, 2, 2], "order": "row_major"},
        "model": {
            "kind": "dense_transformer", "layers": 2, "model_dim": 32, "ffn_dim": 64,
            "heads": 4, "head_dim": 8, "vocab": 64, "ffn": "gated_gelu",
            "position": "relative", "seq_len": 16, "global_batch": 8,
            "dtypes": {"params": "f32", "activations": "bf16"},
        },
        "sharding": {
            "activations": ["x", None, "y"], "ffn_in": ["x", "y"], "ffn_out": ["y", "x"],
            "attn_qkv": ["x", "y", None], "attn_out": ["y", None, "x"],
            "embedding": [None, "y"], "logits": ["x", None, "y"],
        },
        "training": {
            "optimizer": "adafactor", "weight_update_sharding": True, "remat": "none",
            "microbatches": 1, "pipeline_stages": 1,
        },
    }
