#!/usr/bin/env python3
"""A deploy rehearsal without AWS: template.yaml translated to plain
CloudFormation by AWS's own SAM translator (aws-sam-translator, as `sam
deploy` runs it), for a plain stack and for one with every option, then
checked:

- the table: keys pk/sk, TTL on `ttl`, point-in-time recovery, kept on
  stack deletion but not on a failed creation, on-demand ceilings;
- each function's role: the DynamoDB actions of its inline policy and no
  wildcard action, the policy naming the table (or the adopted one);
- with DomainName: the distribution, its alias, its origin secret header;
- the NoEcho parameters (secrets) in any function's environment: only the
  deployment secret, its predecessor and the origin secret may be there
  (printed; issue 30 wants them out of the environment: not yet).

Usage: python3 .ci/translate.py   (AWS_DEFAULT_REGION is set if missing)
Exit 1 with the reason on any failure.
"""

import json
import os
import re
import sys

from samtranslator.public.exceptions import InvalidDocumentException
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

os.environ.setdefault("AWS_DEFAULT_REGION", "eu-central-1")

FUNCTIONS = ["IngestFunction", "QueryFunction", "ConsoleFunction", "RollupFunction"]
ALLOWED_SECRETS_IN_ENV = {"TALLY_SALT_SECRET", "TALLY_PREVIOUS_SECRET", "TALLY_ORIGIN_SECRET"}

PLAIN = {"SaltSecret": "s" * 32}
EVERYTHING = {
    "SaltSecret": "s" * 32,
    "DomainName": "stats.example.com",
    "CertificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/abc",
    "HostedZoneId": "Z123",
    "WebAclArn": "arn:aws:wafv2:us-east-1:123456789012:global/webacl/x/y",
    "OriginVerifySecret": "o" * 32,
    "EmailFrom": "tally@example.com",
    "AdminEmail": "admin@example.com",
    "AlarmEmail": "ops@example.com",
    "MonthlyBudgetUsd": "50",
    "ExistingTableName": "tally-restored",
}


class NoManagedPolicies:
    def load(self):
        return {}


def fail(message):
    print(f"translate: {message}", file=sys.stderr)
    sys.exit(1)


def translated(params):
    template = yaml_parse(open("template.yaml").read())
    # As `sam package` leaves it: each function's code in S3.
    for name in FUNCTIONS:
        template["Resources"][name]["Properties"]["CodeUri"] = f"s3://artifacts/{name}.zip"
    try:
        return template, transform(template, params, NoManagedPolicies())
    except InvalidDocumentException as e:
        fail("; ".join(str(c) for c in e.causes))


def check(label, params):
    template, out = translated(params)
    resources = out["Resources"]
    # Conditions are CloudFormation's to resolve: a resource is kept with
    # its Condition, which is checked by tests/tests/deploy.rs.
    table = resources["Table"]
    props = table["Properties"]
    if [(k["AttributeName"], k["KeyType"]) for k in props["KeySchema"]] != [("pk", "HASH"), ("sk", "RANGE")]:
        fail(f"{label}: table keys {props['KeySchema']}")
    if props["TimeToLiveSpecification"] != {"AttributeName": "ttl", "Enabled": True}:
        fail(f"{label}: TTL {props['TimeToLiveSpecification']}")
    if not props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"]:
        fail(f"{label}: no point-in-time recovery")
    if table.get("DeletionPolicy") != "RetainExceptOnCreate":
        fail(f"{label}: DeletionPolicy {table.get('DeletionPolicy')}")
    if "OnDemandThroughput" not in props:
        fail(f"{label}: no on-demand ceilings")
    no_echo = {n for n, p in template["Parameters"].items() if p.get("NoEcho")}
    for name in FUNCTIONS:
        function = resources[name]
        role_name = function["Properties"]["Role"]["Fn::GetAtt"][0]
        role = resources[role_name]["Properties"]
        actions = set()
        for policy in role.get("Policies", []):
            # A policy given only with a condition (mail): its "then" branch.
            if "Fn::If" in policy:
                policy = policy["Fn::If"][1]
            document = policy["PolicyDocument"]
            if "Fn::If" in document:
                document = document["Fn::If"][1]
            for statement in document["Statement"]:
                listed = statement["Action"]
                listed = [listed] if isinstance(listed, str) else listed
                for action in listed:
                    if "*" in action:
                        fail(f"{label}: {name} has a wildcard action {action}")
                    actions.add(action)
                if any(a.startswith("dynamodb:") for a in listed):
                    resource = json.dumps(statement["Resource"])
                    if ":table/${Name}" not in resource or "ExistingTableName" not in resource:
                        fail(f"{label}: {name}'s table policy names {resource}")
        if not any(a.startswith("dynamodb:") for a in actions):
            fail(f"{label}: {name} has no DynamoDB action")
        env = function["Properties"].get("Environment", {}).get("Variables", {})
        for var, value in env.items():
            refs = set(re.findall(r'"Ref": "([A-Za-z]+)"', json.dumps(value)))
            secret = refs & no_echo
            if secret and var not in ALLOWED_SECRETS_IN_ENV:
                fail(f"{label}: {name}'s {var} holds the secret {secret}")
            if secret:
                print(f"translate: {label}: {name} {var} <- {', '.join(sorted(secret))} (a secret in the environment)")
        print(f"translate: {label}: {name}: {len(actions)} actions, role {role_name}")
    if params.get("DomainName"):
        config = resources["Distribution"]["Properties"]["DistributionConfig"]
        if config["Aliases"] != [{"Ref": "DomainName"}]:
            fail(f"{label}: distribution aliases {config['Aliases']}")
        headers = config["Origins"][0]["OriginCustomHeaders"]
        if headers != [{"HeaderName": "X-Tally-Origin-Verify", "HeaderValue": {"Ref": "OriginVerifySecret"}}]:
            fail(f"{label}: origin headers {headers}")
    print(f"translate: {label}: {len(resources)} CloudFormation resources")


check("plain", PLAIN)
check("every option", EVERYTHING)
