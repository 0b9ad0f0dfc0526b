run tests/data/what-if/dgx-h100-2node-slow-node.yaml
