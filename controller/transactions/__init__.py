"""Transactions and exactly-once (KIP-98, KIP-447, KIP-664, KIP-890): the transaction coordinator as a
broker, its state on ``__transaction_state`` (:mod:`.state_log`, :mod:`.metadata`), the markers it writes
(:mod:`.markers`), its request handling (:mod:`.coordinator`) and the subsystem the Controller builds on
first use (:mod:`.service`); the request handlers of the transaction APIs are in :mod:`.handlers`. The
read side (the last stable offset, aborted transactions) is the data path's, the producers' state per
partition :mod:`controller.records.producers`'s."""
