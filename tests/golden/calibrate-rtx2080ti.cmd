calibrate tests/data/nccl-tests/rtx2080ti-1x2-pcie3-nop2p-all_reduce.log --scenario scenarios/pcie-2gpu-nop2p.yaml
