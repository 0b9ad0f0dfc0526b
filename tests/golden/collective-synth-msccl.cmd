collective scenarios/dgx-h100-1node.yaml --op allgather --ranks 4 --algo synth:tests/data/synthesis/dgx-h100-4ranks-allgather.msccl.xml -b 1M -e 64M -f 8
