compare tests/data/nccl-tests/mi300x-1x8-xgmi-unnamed.log --scenario scenarios/mi300x-1node.yaml --op allreduce
