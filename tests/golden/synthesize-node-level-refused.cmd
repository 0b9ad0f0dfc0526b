synthesize tests/data/synthesis/unequal-4-6-gpus.yaml --op reducescatter --max-tree-ranks 4 --method forest -b 1M -e 1M
