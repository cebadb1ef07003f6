#!/usr/bin/env python3
"""A 29M-parameter decoder transformer for the weights-upload and shape-refinement benchmarks.

``export DIR`` writes, into DIR (nothing of it is committed):

    DIR/model.jaxexport     jax.export of ``forward(params, tokens)`` (f32, CPU)
    DIR/params.safetensors  the weights, in the order of the flattened params pytree
                            (sorted names), data section and every tensor 64-byte aligned
    DIR/tokens.npy          int32 [1, SEQ] tokens

``symbolic FILE`` writes FILE, the same transformer exported shape-polymorphic (the one
committed export, crates/pjrt-stablehlo/benches/data/transformer_symbolic.jaxexport): tokens
int32 ``(b, t)`` with ``t <= MAX_SEQ`` (the positional table has MAX_SEQ rows; ``pos_embed[:t]``),
the weights arguments of static shape (not constants, so the file stays small), logits
``(b, t, VOCAB)``. The benches refine it for concrete ``(b, t)``; tools/bench_vs_jax.py
``--models symbolic`` exports it the same way.

``jax DIR`` is the JAX side of the comparison, as a whole process: reads the safetensors file
with numpy (memory-mapped), ``jax.device_put``s the weights, deserializes the export and runs
it once (``jax.jit(exported.call)``), with JAX's persistent compilation cache in
DIR/jax-cache (run it twice: the first run fills the cache).

Commands (from the repository root; DIR is any scratch directory):

    /tmp/jaxenv/bin/python tools/gen_transformer_export.py export /tmp/tfm
    target/jax-venv-0.10.2/bin/python tools/gen_transformer_export.py symbolic \\
        crates/pjrt-stablehlo/benches/data/transformer_symbolic.jaxexport
    /tmp/jaxenv/bin/python tools/gen_transformer_export.py jax /tmp/tfm      # warms the cache
    /usr/bin/time -v /tmp/jaxenv/bin/python tools/gen_transformer_export.py jax /tmp/tfm
    pjrt run /tmp/tfm/model.jaxexport --params /tmp/tfm/params.safetensors \\
        --input /tmp/tfm/tokens.npy --output-dir /tmp/tfm/out              # warms our cache
    /usr/bin/time -v pjrt run /tmp/tfm/model.jaxexport --params /tmp/tfm/params.safetensors \\
        --input /tmp/tfm/tokens.npy --output-dir /tmp/tfm/out
    pjrt bench h2d --params /tmp/tfm/params.safetensors

Compare "Elapsed (wall clock)" and "Maximum resident set size".

Any JAX from 0.10.2 to 0.12 works (``/tmp/jaxenv`` above is JAX 0.10.2). For JAX 0.12, use
the venv ``tools/gen_jax_export_testdata.py --jax 0.12.0.1`` makes,
``target/jax-venv-0.12.0.1/bin/python``; its export (StableHLO 1.18.0) runs on the ``cpu``
plugin, not on ``cpu-0.106`` (StableHLO up to 1.16.1).
"""

import json
import os
import struct
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402

VOCAB = 8192
D_MODEL = 512
D_FF = 2048
LAYERS = 6
HEADS = 8
SEQ = 64
# The symbolic export's longest sequence (rows of its positional table).
MAX_SEQ = 256


def init_params(seed=0, seq=SEQ):
    rng = np.random.default_rng(seed)

    def dense(n_in, n_out):
        return (rng.standard_normal((n_in, n_out), dtype=np.float32) / np.sqrt(n_in)).astype(np.float32)

    params = {
        "embed": (rng.standard_normal((VOCAB, D_MODEL), dtype=np.float32) * 0.02).astype(np.float32),
        "pos_embed": (rng.standard_normal((seq, D_MODEL), dtype=np.float32) * 0.02).astype(np.float32),
        "final_ln_scale": np.ones(D_MODEL, np.float32),
        "unembed": dense(D_MODEL, VOCAB),
    }
    for layer in range(LAYERS):
        p = f"layer{layer}_"
        params[p + "ln1_scale"] = np.ones(D_MODEL, np.float32)
        params[p + "ln2_scale"] = np.ones(D_MODEL, np.float32)
        params[p + "wq"] = dense(D_MODEL, D_MODEL)
        params[p + "wk"] = dense(D_MODEL, D_MODEL)
        params[p + "wv"] = dense(D_MODEL, D_MODEL)
        params[p + "wo"] = dense(D_MODEL, D_MODEL)
        params[p + "w_up"] = dense(D_MODEL, D_FF)
        params[p + "w_down"] = dense(D_FF, D_MODEL)
    return params


def forward(params, tokens, slice_pos=False):
    """Logits of `tokens` (batch, seq); `slice_pos`: the first seq rows of a longer positional
    table (the symbolic export's), else the table has exactly seq rows."""
    import jax
    import jax.numpy as jnp

    def norm(x, scale):
        return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * scale

    batch, seq = tokens.shape
    pos = params["pos_embed"][:seq] if slice_pos else params["pos_embed"]
    x = params["embed"][tokens] + pos[None]
    mask = jnp.tril(jnp.ones((seq, seq), bool))
    head = D_MODEL // HEADS
    for layer in range(LAYERS):
        p = f"layer{layer}_"
        h = norm(x, params[p + "ln1_scale"])
        split = lambda t: t.reshape(batch, seq, HEADS, head)  # noqa: E731
        q, k, v = (split(h @ params[p + w]) for w in ("wq", "wk", "wv"))
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(head)
        scores = jnp.where(mask, scores, -1e9)
        attn = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)
        x = x + attn.reshape(batch, seq, D_MODEL) @ params[p + "wo"]
        h = norm(x, params[p + "ln2_scale"])
        x = x + jax.nn.gelu(h @ params[p + "w_up"]) @ params[p + "w_down"]
    return norm(x, params["final_ln_scale"]) @ params["unembed"]


def write_safetensors(path, tensors):
    """Our writer's layout: data starts at a multiple of 64; tensors (all f32, sizes multiples
    of 64 bytes here) in the given order, so every one is 64-byte aligned."""
    header, offset = {}, 0
    for name, array in tensors:
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    text = json.dumps(header, separators=(",", ":"))
    text += " " * ((-(8 + len(text))) % 64)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text.encode())
        for _, array in tensors:
            f.write(np.ascontiguousarray(array).tobytes())


def export_model(out_dir):
    import jax
    from jax import export

    os.makedirs(out_dir, exist_ok=True)
    params = init_params()
    tokens = (np.arange(SEQ, dtype=np.int32) * 37 % VOCAB).reshape(1, SEQ)
    exported = export.export(jax.jit(forward), platforms=["cpu"])(params, tokens)
    with open(os.path.join(out_dir, "model.jaxexport"), "wb") as f:
        f.write(exported.serialize())
    # The flattened pytree's order: sorted dict keys.
    write_safetensors(os.path.join(out_dir, "params.safetensors"), sorted(params.items()))
    np.save(os.path.join(out_dir, "tokens.npy"), tokens)
    count = sum(a.size for a in params.values())
    print(f"{count / 1e6:.1f}M parameters, {count * 4 / 1e6:.0f} MB, written to {out_dir}")


def param_shapes(seq=SEQ):
    """init_params' shapes (the flattened pytree's names), without drawing 29M random numbers."""
    shapes = {"embed": (VOCAB, D_MODEL), "pos_embed": (seq, D_MODEL), "final_ln_scale": (D_MODEL,),
              "unembed": (D_MODEL, VOCAB)}
    for layer in range(LAYERS):
        p = f"layer{layer}_"
        shapes.update({p + "ln1_scale": (D_MODEL,), p + "ln2_scale": (D_MODEL,), p + "wq": (D_MODEL, D_MODEL),
                       p + "wk": (D_MODEL, D_MODEL), p + "wv": (D_MODEL, D_MODEL), p + "wo": (D_MODEL, D_MODEL),
                       p + "w_up": (D_MODEL, D_FF), p + "w_down": (D_FF, D_MODEL)})
    return shapes


def export_symbolic(platforms=("cpu",)):
    """The shape-polymorphic export, a jax.export.Exported: tokens (b, t) with t <= MAX_SEQ, the
    weights (a dict, flattened in sorted-name order) of static shape."""
    import jax
    from jax import export

    b, t = export.symbolic_shape("b, t", constraints=[f"t <= {MAX_SEQ}"])
    params = {name: jax.ShapeDtypeStruct(s, np.float32) for name, s in param_shapes(MAX_SEQ).items()}
    tokens = jax.ShapeDtypeStruct((b, t), np.int32)
    fun = jax.jit(lambda params, tokens: forward(params, tokens, slice_pos=True))
    return export.export(fun, platforms=list(platforms))(params, tokens)


def write_symbolic(path):
    import jax

    exported = export_symbolic()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    data = exported.serialize()
    with open(path, "wb") as f:
        f.write(data)
    print(f"{path}: {len(data)} bytes, JAX {jax.__version__}, in {exported.in_avals[-1]}, "
          f"out {exported.out_avals[0]}, {len(exported.in_avals)} inputs")


def read_safetensors(path):
    data = np.memmap(path, dtype=np.uint8, mode="r")
    header_len = struct.unpack("<Q", bytes(data[:8]))[0]
    header = json.loads(bytes(data[8 : 8 + header_len]))
    start = 8 + header_len
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        a, b = entry["data_offsets"]
        out[name] = data[start + a : start + b].view(np.float32).reshape(entry["shape"])
    return out


def run_jax(out_dir):
    started = time.perf_counter()
    import jax
    from jax import export

    jax.config.update("jax_compilation_cache_dir", os.path.join(out_dir, "jax-cache"))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    params = jax.device_put(read_safetensors(os.path.join(out_dir, "params.safetensors")))
    tokens = jax.device_put(np.load(os.path.join(out_dir, "tokens.npy")))
    with open(os.path.join(out_dir, "model.jaxexport"), "rb") as f:
        exported = export.deserialize(bytearray(f.read()))
    # Brought to the host, as `pjrt run` writes its output to a file (indexing the device array
    # would compile more programs).
    logits = np.asarray(jax.jit(exported.call)(params, tokens))
    print(f"logits {logits.shape}, first {logits[0, 0, 0]:.6f}; {time.perf_counter() - started:.3f} s "
          "after the interpreter started")


if __name__ == "__main__":
    commands = {"export": export_model, "symbolic": write_symbolic, "jax": run_jax}
    if len(sys.argv) != 3 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    commands[sys.argv[1]](sys.argv[2])
