"""The ACL and SCRAM administration APIs' request handlers (CreateAcls, DescribeAcls, DeleteAcls,
DescribeUserScramCredentials, AlterUserScramCredentials): one module per API key, as
:mod:`controller.handlers`."""
