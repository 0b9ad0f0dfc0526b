synthesize tests/data/synthesis/h100-2x8-one-nic.yaml --op allgather -b 1M -e 64M -f 8
