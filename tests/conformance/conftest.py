import os
import tempfile

# The backend runner caches generated inputs for the light model-zoo graphs under
# $ONNX_HOME; keep that out of the user's home directory.
os.environ.setdefault("ONNX_HOME", tempfile.mkdtemp(prefix="npuc-onnx-home-"))
