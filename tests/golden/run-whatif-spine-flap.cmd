run tests/data/what-if/dgx-h100-4node-spine-flap.yaml
