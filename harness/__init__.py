"""The reference harness: Apache Kafka (broker, tools, Java client), Kafka's own placement and election
code, and Go clients, fetched and built by the Makefile (``make reference``) into ``.cache/reference``.

Test and benchmark harness only: nothing in ``controller/`` or ``protocol/`` imports it, and it is not part
of the installed distribution.
"""
