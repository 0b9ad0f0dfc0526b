sweep tests/data/what-if/dgx-h100-2node-all-nics.yaml --set what_if.links[0].fail=false,true
