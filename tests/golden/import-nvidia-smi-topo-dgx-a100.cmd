import nvidia-smi-topo tests/data/real-cases/import/dgx-a100-topo-m.txt --gpu A100-SXM4-80GB --nic ib-hdr --pcie pcie-gen4 --cpu-link amd-socket-xgmi --skip-nic mlx5_4 --skip-nic mlx5_5
