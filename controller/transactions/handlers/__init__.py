"""The transaction APIs' request handlers (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit,
DescribeTransactions, ListTransactions): one module per API key, as :mod:`controller.handlers`."""
