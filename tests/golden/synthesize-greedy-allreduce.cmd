synthesize scenarios/dgx-a100-4node-rail.yaml --op allreduce --method greedy -b 8K -e 8M -f 32
