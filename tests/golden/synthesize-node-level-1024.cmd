synthesize scenarios/h100-1024gpu-2to1.yaml --op allgather -b 64M -e 1G -f 16
