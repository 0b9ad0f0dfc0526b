sweep tests/data/sweep/h200-4node-llama3-70b.yaml --set cluster.nodes[0].node.nics.link=ib-ndr,ib-xdr --price-per-gpu-hour 3
