synthesize scenarios/h100-2x8-200g.yaml --op reducescatter --max-tree-ranks 8 --method forest -b 64M -e 1G -f 16
