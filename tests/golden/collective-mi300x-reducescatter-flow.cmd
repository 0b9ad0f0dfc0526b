collective scenarios/mi300x-1node.yaml --op reducescatter -b 64K -e 64M -f 32 --engine flow
