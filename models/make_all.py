"""Regenerates every committed model and its .expected.json in models/.

Usage: /usr/bin/python3 models/make_all.py
The large MLP (U=4096) is not committed; see README.md for its command.
"""

import os
import sys

import generate_common as common
import make_cnn
import make_mlp
import make_resnet_block
import make_transformer


def main():
    def path(name):
        return os.path.join(common.MODELS_DIR, name)

    make_mlp.main(["--units", "64", "-o", path("mlp_u64.onnx")])
    make_cnn.main(["-o", path("cnn.onnx")])
    make_transformer.main(["-o", path("transformer_block.onnx")])
    make_resnet_block.main(["-o", path("resnet_block.onnx")])


if __name__ == "__main__":
    sys.exit(main())
