"""Access control as Kafka 4's ``StandardAuthorizer`` does it: ACLs kept as cluster metadata (:mod:`.store`),
the authorizer that reads them (:mod:`.authorizer`), their model (resource and pattern types, operations,
filters: :mod:`.model`) and the subsystem the Controller builds on first use (:mod:`.service`); the request
handlers of CreateAcls, DescribeAcls and DeleteAcls are in :mod:`.handlers`. Which check each API makes is
its handler's, as in Kafka's ``KafkaApis``, through :meth:`controller.handlers.RequestContext.allowed`."""
