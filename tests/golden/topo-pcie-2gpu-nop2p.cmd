topo scenarios/pcie-2gpu-nop2p.yaml
