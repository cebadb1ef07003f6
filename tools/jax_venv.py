"""The virtual environments the JAX test-data generators run in.

Each JAX version gets its own virtual environment, made on first use in
``target/jax-venv-<version>`` with the Python that JAX release needs (found in
pyenv, ``~/.pyenv/versions/3.X.*``, or as ``python3.X`` on PATH) and the pinned
packages of ``JAX_RELEASES``.  A generator calls ``reexec_in_venv(version)``
before it imports JAX: when the running Python does not have that JAX version,
it runs the generator again, with the same arguments, in the venv.
"""

import glob
import os
import shutil
import subprocess
import sys

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

# JAX version -> (Python minor version it needs, the pip requirements pinned for it).
JAX_RELEASES = {
    # Older releases, for exports made by every JAX minor release since 0.4.30 (issue 51).
    # JAX 0.4.x-0.5.x import absl without declaring it.
    "0.4.30": ("3.11", ["jax==0.4.30", "jaxlib==0.4.30", "numpy", "ml_dtypes", "flatbuffers", "absl-py"]),
    "0.4.38": ("3.11", ["jax==0.4.38", "jaxlib==0.4.38", "numpy", "ml_dtypes", "flatbuffers", "absl-py"]),
    "0.5.3": ("3.11", ["jax==0.5.3", "jaxlib==0.5.3", "numpy", "ml_dtypes", "flatbuffers", "absl-py"]),
    "0.6.2": ("3.11", ["jax==0.6.2", "jaxlib==0.6.2", "numpy", "ml_dtypes", "flatbuffers", "absl-py"]),
    "0.7.2": ("3.11", ["jax==0.7.2", "jaxlib==0.7.2", "numpy", "ml_dtypes", "flatbuffers", "absl-py"]),
    "0.8.3": ("3.11", ["jax==0.8.3", "jaxlib==0.8.3", "numpy", "ml_dtypes", "flatbuffers", "absl-py"]),
    "0.9.2": ("3.11", ["jax==0.9.2", "jaxlib==0.9.2", "numpy", "ml_dtypes", "flatbuffers", "absl-py"]),
    "0.10.2": ("3.11", ["jax==0.10.2", "jaxlib==0.10.2", "numpy", "ml_dtypes", "flatbuffers"]),
    # jax 0.12.0 pins jaxlib<=0.12.0; 0.12.0.1 of both is the newest pair on PyPI.
    "0.12.0.1": ("3.12", ["jax==0.12.0.1", "jaxlib==0.12.0.1", "numpy", "ml_dtypes", "flatbuffers"]),
}


def find_python(minor):
    """The interpreter for Python `minor` ("3.12"): pyenv's, else python3.X on PATH."""
    candidates = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{minor}.*/bin/python")), reverse=True)
    on_path = shutil.which(f"python{minor}")
    if on_path:
        candidates.append(on_path)
    if not candidates:
        sys.exit(f"Python {minor} is needed for this JAX release: install it (pyenv install {minor}) "
                 f"or put python{minor} on PATH")
    return candidates[0]


def venv_python(version, pip_options=()):
    """The Python of target/jax-venv-<version>, created and installed on first use.

    `pip_options` go to ``pip install`` before the requirements (e.g. ``--only-binary=:all:``).
    """
    if version not in JAX_RELEASES:
        sys.exit(f"unknown JAX version {version}; known: {', '.join(JAX_RELEASES)} (add it to JAX_RELEASES)")
    minor, requirements = JAX_RELEASES[version]
    venv = os.path.join(REPO, "target", f"jax-venv-{version}")
    python = os.path.join(venv, "bin", "python")
    stamp = os.path.join(venv, ".installed")
    if not os.path.exists(stamp) or open(stamp).read().split() != requirements:
        subprocess.run([find_python(minor), "-m", "venv", venv], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", *pip_options, *requirements], check=True)
        with open(stamp, "w") as f:
            f.write(" ".join(requirements))
    return python


def running_jax_version():
    """The version of the jax package the running Python has, or None."""
    try:
        from importlib.metadata import version
        return version("jax")
    except Exception:  # noqa: BLE001 (no jax here)
        return None


def reexec_in_venv(version, pip_options=()):
    """Return if this Python has JAX `version`; else run the calling script again in its venv."""
    if running_jax_version() != version:
        python = venv_python(version, pip_options)
        script = os.path.abspath(sys.argv[0])
        os.execv(python, [python, script, *sys.argv[1:]])
