plan tests/data/what-if/mixed-a100-h100-2node.yaml --space tp=8 --space pp=1 --space mbs=1
