compare tests/data/nccl-tests/h100-2x8-ethernet-gpudirect-all_reduce.log --scenario scenarios/h100-2x8-200g.yaml
