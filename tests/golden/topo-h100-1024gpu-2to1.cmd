topo scenarios/h100-1024gpu-2to1.yaml
