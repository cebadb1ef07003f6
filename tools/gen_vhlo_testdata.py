#!/usr/bin/env python3
"""StableHLO portable artifacts as StableHLO's own serializer writes them, at every version.

For pjrt-stablehlo's "every version" tests: this repository's StableHLO test programs (the
op-family programs of tools/gen_stablehlo_ops_testdata.py, printed by JAX with their locations,
and a few of them without locations) serialized by jaxlib's StableHLO serializer
(`hlo.serialize_portable_artifact_str`, not XLA's, which also rewrites the module) at every
minor version on VHLO's version log, from jaxlib's `get_minimum_version()` to its
`get_current_version()`.  Each artifact is checked by jaxlib's deserializer.

Writes tests/data/vhlo/:

- `<program>.mlir`: the text the artifacts were serialized from;
- `<program>.<sha256 prefix>.body`: one distinct artifact with its header cut off (magic,
  bytecode version, producer string).  Artifacts of one program at neighbouring versions often
  differ only in the producer string ("StableHLO_v1.3.0"), so the rest is stored once (and
  shared by both jaxlibs' indexes where their serializers agree);
- `<program>.<sha256 prefix>.read.mlir`: the module jaxlib's deserializer reads an artifact
  as (upgraded to current StableHLO; printed generic, with every op's location), once per
  distinct text;
- `index-jax-<version>.json`: `{"programs": {program: {version: {"bytecode_version": n, "producer": s,
  "body": file, "reads_as": file}}}, "refusals": {program: {version: jaxlib's message}}, "versions": [...]}`.
  An artifact's bytes are `b"ML\\xefR" + varint(bytecode_version) + producer + b"\\0" + body`
  (the test rebuilds them; this script checks that the rebuilt bytes are jaxlib's);
  `"written"`: pjrt-stablehlo's writer given each artifact writes it again for its version
  (`cargo run -p pjrt-stablehlo --example write_versions`), and jaxlib's deserializer reads
  ours: how many into the module it reads StableHLO's as, how many byte for byte
  StableHLO's, and each that differs, is refused, or is not written (with why).

Run (tools/jax_venv.py makes the venvs on first use):

    python3 tools/gen_vhlo_testdata.py 0.10.2      # writes 0.9.0 .. 1.17.0
    python3 tools/gen_vhlo_testdata.py 0.12.0.1    # up to 1.22.0 (Python 3.12)
"""

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_venv  # noqa: E402

JAX_VERSION = sys.argv[1] if len(sys.argv) > 1 else "0.10.2"
jax_venv.reexec_in_venv(JAX_VERSION)

os.environ["JAX_PLATFORMS"] = "cpu"

from jax._src.interpreters import mlir as jax_mlir  # noqa: E402
from jax._src.lib.mlir import ir  # noqa: E402
from jax._src.lib.mlir.dialects import hlo  # noqa: E402

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OPS_DIR = os.path.join(REPO, "tests", "data", "stablehlo_ops", "jax-0.10.2")
OUT = os.path.join(REPO, "tests", "data", "vhlo")
INDEX = f"index-jax-{JAX_VERSION}.json"

# The op-family programs (every one; each covers a family of ops); those also written without
# locations (to cover the form an artifact has when printed without debug info).
WITHOUT_LOCATIONS = ["conv", "dot", "gather_scatter"]

MAGIC = b"ML\xefR"

# Programs JAX does not emit (collectives with channels, send/recv, the dynamic ops, transpose,
# call, custom_call, select_and_scatter): in StableHLO's text, wrapped in a module.
HAND_WRITTEN = {
"collectives": '''
func.func public @main(%a: tensor<4x2xf32>, %b: tensor<8xf32>) -> (tensor<8x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4xf32>, tensor<4x2xf32>, tensor<4x2xf32>) {
  %0 = "stablehlo.all_gather"(%a) {all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, use_global_device_ids} : (tensor<4x2xf32>) -> tensor<8x2xf32>
  %1 = "stablehlo.all_reduce"(%a) ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %s = stablehlo.add %x, %y : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {channel_handle = #stablehlo.channel_handle<handle = 2, type = 0>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<4x2xf32>) -> tensor<4x2xf32>
  %2 = "stablehlo.all_to_all"(%a) {split_dimension = 0 : i64, concat_dimension = 0 : i64, split_count = 2 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>} : (tensor<4x2xf32>) -> tensor<4x2xf32>
  %3 = "stablehlo.reduce_scatter"(%b) ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %s = stablehlo.add %x, %y : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {scatter_dimension = 0 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 4, type = 0>} : (tensor<8xf32>) -> tensor<4xf32>
  %4 = "stablehlo.collective_permute"(%a) {source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 5, type = 0>} : (tensor<4x2xf32>) -> tensor<4x2xf32>
  %5 = "stablehlo.cross-replica-sum"(%a) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<4x2xf32>) -> tensor<4x2xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<8x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4xf32>, tensor<4x2xf32>, tensor<4x2xf32>
}
''',
"send_recv": '''
func.func public @main(%a: tensor<3xf32>) -> (tensor<3xf32>, !stablehlo.token) {
  %t = stablehlo.after_all : !stablehlo.token
  %t1 = "stablehlo.send"(%a, %t) {channel_handle = #stablehlo.channel_handle<handle = 7, type = 2>, is_host_transfer = true} : (tensor<3xf32>, !stablehlo.token) -> !stablehlo.token
  %r:2 = "stablehlo.recv"(%t1) {channel_handle = #stablehlo.channel_handle<handle = 8, type = 3>, is_host_transfer = true} : (!stablehlo.token) -> (tensor<3xf32>, !stablehlo.token)
  %o:2 = "stablehlo.infeed"(%r#1) {infeed_config = "cfg"} : (!stablehlo.token) -> (tensor<3xf32>, !stablehlo.token)
  %t2 = "stablehlo.outfeed"(%o#0, %o#1) {outfeed_config = "out"} : (tensor<3xf32>, !stablehlo.token) -> !stablehlo.token
  return %r#0, %t2 : tensor<3xf32>, !stablehlo.token
}
''',
"dynamic_ops": '''
func.func public @main(%x: tensor<?x4xf32>, %i: tensor<2x1xi32>, %w: tensor<3x3x1x1xf32>, %img: tensor<1x5x5x1xf32>, %pad: tensor<2x2xi32>, %shape: tensor<2xi32>) -> (tensor<2x4xf32>, tensor<1x5x5x1xf32>, tensor<?x?xf32>, tensor<?xi32>) {
  %sizes = stablehlo.constant dense<[1, 4]> : tensor<2xi32>
  %g = "stablehlo.dynamic_gather"(%x, %i, %sizes) {dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = true} : (tensor<?x4xf32>, tensor<2x1xi32>, tensor<2xi32>) -> tensor<2x4xf32>
  %c = "stablehlo.dynamic_conv"(%img, %w, %pad) {dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, window_strides = array<i64: 1, 1>, lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, feature_group_count = 1 : i64, batch_group_count = 1 : i64} : (tensor<1x5x5x1xf32>, tensor<3x3x1x1xf32>, tensor<2x2xi32>) -> tensor<1x5x5x1xf32>
  %b = "stablehlo.dynamic_broadcast_in_dim"(%x, %shape) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<?x4xf32>, tensor<2xi32>) -> tensor<?x?xf32>
  %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
  %n1 = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
  %io = "stablehlo.dynamic_iota"(%n1) {iota_dimension = 0 : i64} : (tensor<1xi32>) -> tensor<?xi32>
  return %g, %c, %b, %io : tensor<2x4xf32>, tensor<1x5x5x1xf32>, tensor<?x?xf32>, tensor<?xi32>
}
''',
"mesh_axes": '''
func.func private @mesh()
func.func public @main(%a: tensor<f32>) -> tensor<f32> {
  %0 = "stablehlo.all_reduce"(%a) ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %s = stablehlo.add %x, %y : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh, axes = [#stablehlo.axis_ref<name = "x", sub_axis_info = (1)2>, #stablehlo.axis_ref<name = "y">]>} : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
''',
"locations": '''
func.func public @main(%a: tensor<3xf32> loc("arg"("f.py":1:2)), %b: tensor<3xf32> loc(unknown)) -> tensor<3xf32> {
  %0 = stablehlo.add %a, %b : tensor<3xf32> loc("f.py":3:4)
  %1 = stablehlo.multiply %0, %b : tensor<3xf32> loc("f.py":5:6 to 7:8)
  %2 = stablehlo.subtract %1, %a : tensor<3xf32> loc("f.py":9:1 to :12)
  %3 = stablehlo.abs %2 : tensor<3xf32> loc("name")
  %4 = stablehlo.negate %3 : tensor<3xf32> loc(callsite("callee"("g.py":1:1) at callsite("f"("f.py":2:2) at "main.py":3:3)))
  %5 = stablehlo.exponential %4 : tensor<3xf32> loc(fused["a.py":1:1, "b"])
  %6 = stablehlo.sine %5 : tensor<3xf32> loc(fused<"meta">["c.py":4:5])
  %7 = stablehlo.cosine %6 : tensor<3xf32> loc("outer"("inner"(unknown)))
  return %7 : tensor<3xf32> loc(unknown)
}
''',
"structure": '''
func.func private @inc(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %one = stablehlo.constant dense<1.0> : tensor<2x3xf32>
  %r = stablehlo.add %a, %one : tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}
func.func public @main(%a: tensor<2x3xf32>, %k: tensor<2xui32>) -> (tensor<3x2xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xui32>, tensor<4xui32>, tensor<2x3xf32>) {
  %t = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %c = func.call @inc(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %cc = stablehlo.custom_call @my_target(%a) {backend_config = "cfg", has_side_effect = true, api_version = 2 : i32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %rev = stablehlo.reverse %a, dims = [1] : tensor<2x3xf32>
  %s:2 = stablehlo.rng_bit_generator %k, algorithm = THREE_FRY : (tensor<2xui32>) -> (tensor<2xui32>, tensor<4xui32>)
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %sas = "stablehlo.select_and_scatter"(%a, %a, %z) ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %p = stablehlo.compare GE, %x, %y : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }, {
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %q = stablehlo.add %x, %y : tensor<f32>
    stablehlo.return %q : tensor<f32>
  }) {window_dimensions = array<i64: 1, 1>, window_strides = array<i64: 1, 1>} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %t, %c, %cc, %rev, %s#0, %s#1, %sas : tensor<3x2xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xui32>, tensor<4xui32>, tensor<2x3xf32>
}
''',
}


def parse_version(v):
    return tuple(int(x) for x in v.split("."))


def versions():
    """The minor versions of VHLO's version log jaxlib spans: 0.9.0 .. 0.20.0, 1.0.0 .. current."""
    lo, hi = parse_version(hlo.get_minimum_version()), parse_version(hlo.get_current_version())
    out = []
    for major, last_minor in ((0, 20), (1, hi[1] if hi[0] == 1 else 0)):
        for minor in range(0, last_minor + 1):
            v = (major, minor, 0)
            if lo <= v <= hi:
                out.append(v)
    return [".".join(map(str, v)) for v in out]


def varint(n):
    """MLIR bytecode's prefix varint (as the test reads it)."""
    # MLIR's encoding: the number of trailing zero bits of the first byte + 1 is the length.
    if n < (1 << 7):
        return bytes([(n << 1) | 1])
    raise ValueError("bytecode versions are small")


def split(artifact):
    """(bytecode version, producer, body) of an artifact."""
    assert artifact[:4] == MAGIC, "not MLIR bytecode"
    first = artifact[4]
    assert first & 1, "a bytecode version over 127"
    version = first >> 1
    end = artifact.index(b"\0", 5)
    return version, artifact[5:end].decode(), artifact[end + 1:]


def program_texts(ctx):
    """(name, text) of each program, in name order."""
    out = []
    for f in sorted(os.listdir(OPS_DIR)):
        if not f.endswith(".mlir"):
            continue
        name = f[:-5]
        text = open(os.path.join(OPS_DIR, f)).read()
        out.append((name, text))
        if name in WITHOUT_LOCATIONS:
            module = ir.Module.parse(text, context=ctx)
            plain = module.operation.get_asm(enable_debug_info=False)
            out.append((name + "_noloc", plain))
    for name, body in HAND_WRITTEN.items():
        try:
            module = ir.Module.parse("module {" + body + "}", context=ctx)
        except Exception as e:  # noqa: BLE001 (an op or attribute this jaxlib does not know)
            out.append((name, None, re.sub(r"\s+", " ", str(e))[:400]))
            continue
        # With locations: the parser's own ("-":line:col) and those the program states.
        out.append((name, module.operation.get_asm(enable_debug_info=True)))
    return out


def serialize(ctx, text, version):
    """(artifact, None), or (None, why) where jaxlib refuses: its MLIR diagnostics (which it
    prints on stderr, not in the exception) without the source locations.

    A program with Shardy ops (sdy.mesh) is parsed in JAX's context, which has the sdy dialect,
    and serialized from there (as jax.export does); others from the text, as StableHLO's
    `serialize_portable_artifact_str` does."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as log:
        os.dup2(log.fileno(), 2)
        try:
            if "sdy." in text:
                module = ir.Module.parse(text, context=ctx)
                return bytes(hlo.serialize_portable_artifact(module, version)), None
            return bytes(hlo.serialize_portable_artifact_str(text, version)), None
        except Exception as e:  # noqa: BLE001 (jaxlib raises ValueError / MLIRError)
            os.dup2(saved, 2)
            log.seek(0)
            diagnostics = log.read().decode(errors="replace")
            why = [m.group(1) for m in re.finditer(r"error: (failed to legalize operation '[^']*')", diagnostics)]
            if not why:
                why = [line.split("error: ", 1)[-1] for line in diagnostics.splitlines() if "error: " in line]
            why = [w for w in why if w != "failed to serialize module"]
            return None, "; ".join(dict.fromkeys(why or [str(e)]))[:400]
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def deserialize(ctx, artifact, version, name):
    """The text jaxlib's deserializer reads the artifact as (upgraded to current StableHLO)."""
    module = hlo.deserialize_portable_artifact(ctx, artifact)
    if module is None:
        sys.exit(f"{name} at {version}: jaxlib's deserializer refuses its own artifact")
    return module.operation.get_asm(enable_debug_info=True, print_generic_op_form=True)


def without_locations(ctx, text):
    module = ir.Module.parse(text, context=ctx)
    return module.operation.get_asm(enable_debug_info=False, print_generic_op_form=True)


def check_ours(ctx, index, artifacts):
    """pjrt-stablehlo's writer, given each artifact, writes it again for its version
    (`cargo run --example write_versions`); jaxlib's deserializer must read ours into the
    module it reads StableHLO's artifact as (locations aside). Returns the counts, and each
    artifact where it does not, or where ours is refused."""
    with tempfile.TemporaryDirectory() as tmp:
        given, ours = os.path.join(tmp, "given"), os.path.join(tmp, "ours")
        os.makedirs(given)
        for (name, version), artifact in artifacts.items():
            open(os.path.join(given, f"{name}@{version}.mlirbc"), "wb").write(artifact)
        subprocess.run(["cargo", "run", "-q", "-p", "pjrt-stablehlo", "--example", "write_versions", "--", given, ours],
                       check=True, cwd=REPO)
        result = {"same": 0, "byte_identical": 0, "differs": [], "refused_by_jaxlib": [], "not_written": {}}
        for (name, version), artifact in sorted(artifacts.items()):
            key = f"{name}@{version}"
            error = os.path.join(ours, key + ".error")
            if os.path.exists(error):
                result["not_written"][key] = open(error).read()[:300]
                continue
            mine = open(os.path.join(ours, key + ".mlirbc"), "rb").read()
            result["byte_identical"] += mine == artifact
            try:
                got = hlo.deserialize_portable_artifact(ctx, mine)
            except Exception as e:  # noqa: BLE001
                got = None
                print(key, "refused by jaxlib:", e)
            if got is None:
                result["refused_by_jaxlib"].append(key)
                continue
            want = open(os.path.join(OUT, index["programs"][name][version]["reads_as"])).read()
            if got.operation.get_asm(enable_debug_info=False, print_generic_op_form=True) == without_locations(ctx, want):
                result["same"] += 1
            else:
                result["differs"].append(key)
    print("ours:", result["same"], "read by jaxlib as StableHLO's,", result["byte_identical"], "byte-identical,",
          len(result["differs"]), "differ,", len(result["refused_by_jaxlib"]), "refused,",
          len(result["not_written"]), "not written")
    return result


def main():
    ctx = jax_mlir.make_ir_context()
    os.makedirs(OUT, exist_ok=True)
    index = {"jaxlib": JAX_VERSION, "minimum": hlo.get_minimum_version(),
             "current": hlo.get_current_version(), "versions": versions(), "programs": {}, "refusals": {}}
    total = 0
    artifacts = {}
    for name, text, *why in program_texts(ctx):
        if text is None:
            index["refusals"][name] = {v: f"jaxlib does not parse it: {why[0]}" for v in index["versions"]}
            continue
        open(os.path.join(OUT, f"{name}.mlir"), "w").write(text)
        bodies, texts = {}, {}
        entry = {}
        for version in index["versions"]:
            artifact, why = serialize(ctx, text, version)
            if artifact is None:
                index["refusals"].setdefault(name, {})[version] = why
                continue
            artifacts[(name, version)] = artifact
            read = deserialize(ctx, artifact, version, name)
            read_digest = hashlib.sha256(read.encode()).hexdigest()
            if read_digest not in texts:
                texts[read_digest] = f"{name}.{read_digest[:12]}.read.mlir"
                open(os.path.join(OUT, texts[read_digest]), "w").write(read)
            bc, producer, body = split(artifact)
            assert MAGIC + varint(bc) + producer.encode() + b"\0" + body == artifact
            digest = hashlib.sha256(body).hexdigest()
            if digest not in bodies:
                bodies[digest] = f"{name}.{digest[:12]}.body"
                open(os.path.join(OUT, bodies[digest]), "wb").write(body)
                total += len(body)
            entry[version] = {"bytecode_version": bc, "producer": producer, "body": bodies[digest],
                              "reads_as": texts[read_digest]}
        index["programs"][name] = entry
        print(name, len(entry), "versions,", len(bodies), "distinct,", len(texts), "read as,",
              len(index["refusals"].get(name, {})), "refused")
    index["written"] = check_ours(ctx, index, artifacts)
    with open(os.path.join(OUT, INDEX), "w") as f:
        json.dump(index, f, indent=1, sort_keys=True)
        f.write("\n")
    # Bodies no index names any more (another jaxlib's index may share them).
    used = set()
    for f in os.listdir(OUT):
        if f.startswith("index-"):
            for entry in json.load(open(os.path.join(OUT, f)))["programs"].values():
                used.update(a["body"] for a in entry.values())
                used.update(a["reads_as"] for a in entry.values())
    for f in os.listdir(OUT):
        if (f.endswith(".body") or f.endswith(".read.mlir")) and f not in used:
            os.remove(os.path.join(OUT, f))
    print("bodies:", total, "bytes")


if __name__ == "__main__":
    main()
