run tests/data/what-if/dgx-h100-4node-dp-pp-contention.yaml
