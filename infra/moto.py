#!/usr/bin/env python3
"""A local AWS stand-in for Sundial: moto server with the table, queues and event bus of template.yaml.

    python3 infra/moto.py up [--port N] [--prefix NAME] [--region R] [--template PATH] [--ignore-stdin]
    python3 infra/moto.py up --create-only --endpoint URL [--prefix NAME] ...

`up` starts moto server on 127.0.0.1 (port N, or a free one), creates the DynamoDB table, the SQS
queues with their dead-letter queues and redrive policies, the EventBridge bus and the signing
secret, all read from template.yaml so that nothing is written down twice, then prints ONE line of
JSON to stdout:

    {"endpoint": "http://127.0.0.1:PORT", "region": "us-east-1", "env": {"AWS_ENDPOINT_URL": ..., ...}}

`env` holds the AWS client settings and every environment variable the template gives the Lambda
functions that can be resolved locally (SUNDIAL_TABLE, SUNDIAL_DISPATCH_QUEUE_URL, ...), plus
SUNDIAL_DISPATCH_DLQ_URL and SUNDIAL_NOTIFY_DLQ_URL. It then serves until its standard input
reaches end of file (the parent closed the pipe or exited) or it gets SIGTERM or SIGINT, and exits 0.
With --ignore-stdin it serves until a signal only (for running it in the background by hand).

With --create-only --endpoint URL it creates the resources on a moto server that is already running,
prints the same line and exits. Creating is idempotent, and --prefix keeps separate sets apart.

Needs Python 3.9+, boto3 and moto[server]; reads the template with PyYAML (a moto dependency) or,
failing that, cfn-lint's decoder.
"""

import argparse
import json
import os
import re
import secrets
import signal
import string
import sys
import threading
import time

# This file is named moto.py: drop its own folder from the import path, or `import moto` below
# would import this script again instead of the moto package.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

DEFAULT_TEMPLATE = os.path.join(os.path.dirname(_HERE), "template.yaml")
ACCOUNT_ID = "123456789012"  # moto's default account

# Which template resource gives which local name and environment variable.
QUEUE_ENV = {
    "DispatchQueue": "SUNDIAL_DISPATCH_QUEUE_URL",
    "DispatchDeadLetterQueue": "SUNDIAL_DISPATCH_DLQ_URL",
    "NotifyQueue": "SUNDIAL_NOTIFY_QUEUE_URL",
    "NotifyDeadLetterQueue": "SUNDIAL_NOTIFY_DLQ_URL",
}

# CloudFormation AWS::SQS::Queue properties that are SQS queue attributes of the same name.
QUEUE_ATTRIBUTES = (
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "DelaySeconds",
    "FifoQueue",
    "FifoThroughputLimit",
    "KmsDataKeyReusePeriodSeconds",
    "KmsMasterKeyId",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ReceiveMessageWaitTimeSeconds",
    "RedriveAllowPolicy",
    "RedrivePolicy",
    "SqsManagedSseEnabled",
    "VisibilityTimeout",
)


def fail(message, code=2):
    print(f"infra/moto.py: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


try:
    import boto3
    from botocore.config import Config
    from botocore.exceptions import ClientError
except ImportError as e:
    fail(f"boto3 is not importable ({e}); install it with: pip install boto3 'moto[server]'")


# ----------------------------------------------------------------------------- reading the template


def load_template(path):
    """template.yaml as plain data, short tags (`!Ref x`) turned into their long form ({"Ref": x})."""
    try:
        import yaml
    except ImportError:
        yaml = None
    if yaml is None:
        try:
            from cfnlint.decode import decode
        except ImportError:
            fail("neither PyYAML nor cfn-lint is importable to read the template")
        template, matches = decode(path)
        if template is None:
            fail(f"{path}: " + "; ".join(str(m) for m in matches))
        return json.loads(json.dumps(template, default=str))

    class Loader(yaml.SafeLoader):
        pass

    def construct(loader, suffix, node):
        if isinstance(node, yaml.ScalarNode):
            value = loader.construct_scalar(node)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)
        if suffix == "Ref":
            return {"Ref": value}
        if suffix == "Condition":
            return {"Condition": value}
        if suffix == "GetAtt" and isinstance(value, str):
            value = value.split(".", 1)
        return {f"Fn::{suffix}": value}

    Loader.add_multi_constructor("!", construct)
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.load(f, Loader=Loader)  # noqa: S506 - SafeLoader subclass
    except (OSError, yaml.YAMLError) as e:
        fail(f"reading {path}: {e}")


class Unresolved(Exception):
    """A value that only exists on AWS (the HTTP API's URL, say)."""


NO_VALUE = object()


class Resolver:
    """Evaluates the intrinsic functions of the template against parameter defaults and the
    resources created so far."""

    def __init__(self, template, prefix, region):
        self.template = template
        self.params = {}
        for name, spec in (template.get("Parameters") or {}).items():
            default = spec.get("Default")
            if default is None:
                continue
            if spec.get("Type") == "CommaDelimitedList":
                default = [item.strip() for item in str(default).split(",")]
            self.params[name] = default
        self.refs = {
            "AWS::Region": region,
            "AWS::StackName": prefix,
            "AWS::AccountId": ACCOUNT_ID,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
        }
        self.attrs = {}
        self.secrets = {}  # secret ARN -> value, for {{resolve:secretsmanager:...}}

    def condition(self, name):
        return bool(self.resolve(self.template["Conditions"][name]))

    def resolve(self, node):
        if isinstance(node, list):
            out = [self.resolve(item) for item in node]
            return [item for item in out if item is not NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) != 1:
            return {k: v for k, v in ((k, self.resolve(v)) for k, v in node.items()) if v is not NO_VALUE}
        (key, arg), = node.items()
        if key == "Ref":
            if arg == "AWS::NoValue":
                return NO_VALUE
            if arg in self.refs:
                return self.refs[arg]
            if arg in self.params:
                return self.params[arg]
            raise Unresolved(f"Ref {arg}")
        if key == "Fn::GetAtt":
            attr = tuple(arg)
            if attr in self.attrs:
                return self.attrs[attr]
            raise Unresolved(f"GetAtt {'.'.join(arg)}")
        if key == "Fn::Sub":
            text, extra = (arg, {}) if isinstance(arg, str) else (arg[0], self.resolve(arg[1]))

            def sub(match):
                name = match.group(1)
                if name.startswith("!"):
                    return "${" + name[1:] + "}"
                if name in extra:
                    return str(extra[name])
                if "." in name:
                    return str(self.resolve({"Fn::GetAtt": name.split(".", 1)}))
                return str(self.resolve({"Ref": name}))

            return self.dynamic(re.sub(r"\$\{([^}]+)\}", sub, text))
        if key == "Fn::Join":
            sep, items = arg
            return str(sep).join(str(i) for i in self.resolve(items))
        if key == "Fn::If":
            name, yes, no = arg
            return self.resolve(yes if self.condition(name) else no)
        if key == "Fn::Equals":
            a, b = self.resolve(arg)
            return str(a) == str(b)
        if key == "Fn::Not":
            return not self.resolve(arg[0])
        if key == "Fn::And":
            return all(self.resolve(arg))
        if key == "Fn::Or":
            return any(self.resolve(arg))
        if key == "Condition":
            return self.condition(arg)
        if key == "Fn::Select":
            index, items = self.resolve(arg)
            return items[int(index)]
        if key.startswith("Fn::"):
            raise Unresolved(key)
        out = self.resolve(arg)
        return NO_VALUE if out is NO_VALUE else {key: out}

    def dynamic(self, text):
        """CloudFormation dynamic references to Secrets Manager, as deploys resolve them."""

        def secret(match):
            arn = match.group(1)
            if arn not in self.secrets:
                raise Unresolved(f"secret {arn}")
            return self.secrets[arn]

        return re.sub(r"\{\{resolve:secretsmanager:(.+?):SecretString\}\}", secret, text)


def as_env(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


# ----------------------------------------------------------------------------- creating resources


def local_name(prefix, logical_id):
    """DispatchQueue -> sundial-dispatch, DispatchDeadLetterQueue -> sundial-dispatch-dlq, Table -> sundial-table."""
    base = logical_id
    dlq = base.endswith("DeadLetterQueue")
    if dlq:
        base = base[: -len("DeadLetterQueue")]
    elif base.endswith("Queue") and base != "Queue":
        base = base[: -len("Queue")]
    words = re.sub(r"(?<!^)(?=[A-Z])", "-", base).lower()
    return f"{prefix}-{words}" + ("-dlq" if dlq else "")


def create(endpoint, region, prefix, template, parameters=None, api_endpoint=None, stack=None):
    """Creates the template's table, queues, bus and secret on `endpoint`; returns the env map.

    `parameters` overrides parameter defaults (name -> string); `api_endpoint` stands in for the
    HTTP API's URL (`!GetAtt HttpApi.ApiEndpoint`), which only a local API Gateway emulator has;
    `stack`, a dict, receives the resolved description of the functions, routes and queues
    (`describe`)."""
    resources = template.get("Resources") or {}
    r = Resolver(template, prefix, region)
    for name, value in (parameters or {}).items():
        spec = (template.get("Parameters") or {}).get(name)
        if spec is None:
            fail(f"--parameter {name}: the template has no such parameter")
        if spec.get("Type") == "CommaDelimitedList":
            value = [item.strip() for item in value.split(",")]
        r.params[name] = value
    for logical, res in resources.items():
        kind = res.get("Type", "")
        if kind.startswith("AWS::ApiGatewayV2::"):
            # Routes name their integration and authorizer by these; the emulator reads them.
            r.refs[logical] = logical
        if kind == "AWS::Serverless::Function":
            name = local_name(prefix, logical)
            r.refs[logical] = name
            r.attrs[(logical, "Arn")] = f"arn:aws:lambda:{region}:{ACCOUNT_ID}:function:{name}"
    if api_endpoint:
        for resource in of_kind(resources, "AWS::ApiGatewayV2::Api"):
            r.attrs[(resource, "ApiEndpoint")] = api_endpoint
    session = boto3.session.Session(
        aws_access_key_id="test", aws_secret_access_key="test", region_name=region
    )
    config = Config(retries={"max_attempts": 2, "mode": "standard"})

    def client(service):
        return session.client(service, endpoint_url=endpoint, config=config)

    def of_type(kind):
        return {k: v for k, v in resources.items() if v.get("Type") == kind}

    env = {}

    # Secrets first: function environments may refer to them with {{resolve:...}}.
    sm = client("secretsmanager")
    for logical, res in of_type("AWS::SecretsManager::Secret").items():
        if res.get("Condition") and not r.condition(res["Condition"]):
            continue  # a secret the parameters leave out (ConsoleTokensSecret without Console)
        props = r.resolve(res.get("Properties") or {})
        name = local_name(prefix, logical)
        try:
            arn = sm.describe_secret(SecretId=name)["ARN"]
            value = sm.get_secret_value(SecretId=name)["SecretString"]
        except ClientError as e:
            if e.response["Error"]["Code"] != "ResourceNotFoundException":
                raise
            gen = props.get("GenerateSecretString") or {}
            alphabet = string.ascii_letters + string.digits
            if not gen.get("ExcludePunctuation"):
                alphabet += "!#$%&()*+,-.:;<=>?@[]^_{|}~"
            value = "".join(secrets.choice(alphabet) for _ in range(int(gen.get("PasswordLength", 32))))
            arn = sm.create_secret(Name=name, SecretString=value)["ARN"]
        r.refs[logical] = arn
        r.secrets[arn] = value

    # Tables.
    ddb = client("dynamodb")
    for logical, res in of_type("AWS::DynamoDB::Table").items():
        props = r.resolve(res.get("Properties") or {})
        name = props.get("TableName") or local_name(prefix, logical)
        args = {
            "TableName": name,
            "AttributeDefinitions": props["AttributeDefinitions"],
            "KeySchema": props["KeySchema"],
            "BillingMode": props.get("BillingMode", "PROVISIONED"),
        }
        if props.get("GlobalSecondaryIndexes"):
            args["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
        if props.get("LocalSecondaryIndexes"):
            args["LocalSecondaryIndexes"] = props["LocalSecondaryIndexes"]
        if "ProvisionedThroughput" in props:
            args["ProvisionedThroughput"] = props["ProvisionedThroughput"]
        sse = props.get("SSESpecification")
        if sse:
            args["SSESpecification"] = {"Enabled": bool(sse.get("SSEEnabled"))}
        try:
            ddb.create_table(**args)
        except ClientError as e:
            if e.response["Error"]["Code"] != "ResourceInUseException":
                raise
        ttl = props.get("TimeToLiveSpecification")
        if ttl and ttl.get("Enabled"):
            current = ddb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
            if current.get("TimeToLiveStatus") not in ("ENABLED", "ENABLING"):
                ddb.update_time_to_live(
                    TableName=name,
                    TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True},
                )
        pitr = props.get("PointInTimeRecoverySpecification") or {}
        if pitr.get("PointInTimeRecoveryEnabled"):
            try:
                ddb.update_continuous_backups(
                    TableName=name,
                    PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True},
                )
            except ClientError:
                pass  # a nicety only; moto versions differ
        r.refs[logical] = name
        r.attrs[(logical, "Arn")] = f"arn:aws:dynamodb:{region}:{ACCOUNT_ID}:table/{name}"
        if logical == "Table":
            env["SUNDIAL_TABLE"] = name

    # Queues, dead-letter queues before the queues whose redrive policy names them.
    sqs = client("sqs")
    pending = dict(of_type("AWS::SQS::Queue"))
    while pending:
        progressed = False
        for logical, res in list(pending.items()):
            try:
                props = r.resolve(res.get("Properties") or {})
            except Unresolved:
                continue
            name = props.get("QueueName") or local_name(prefix, logical)
            attributes = {}
            for key in QUEUE_ATTRIBUTES:
                if key not in props:
                    continue
                value = props[key]
                if isinstance(value, (dict, list)):
                    value = json.dumps(value)
                attributes[key] = as_env(value)
            url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
            # create_queue leaves an existing queue's attributes alone; make them match.
            sqs.set_queue_attributes(QueueUrl=url, Attributes=attributes)
            arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            r.refs[logical] = url
            r.attrs[(logical, "Arn")] = arn
            r.attrs[(logical, "QueueName")] = name
            r.attrs[(logical, "QueueUrl")] = url
            if logical in QUEUE_ENV:
                env[QUEUE_ENV[logical]] = url
            del pending[logical]
            progressed = True
        if not progressed:
            fail(f"cannot resolve the properties of queues {sorted(pending)}", 1)

    # Event buses.
    events = client("events")
    for logical, res in of_type("AWS::Events::EventBus").items():
        props = r.resolve(res.get("Properties") or {})
        name = props.get("Name") or local_name(prefix, logical)
        try:
            arn = events.create_event_bus(Name=name)["EventBusArn"]
        except ClientError as e:
            if e.response["Error"]["Code"] != "ResourceAlreadyExistsException":
                raise
            arn = events.describe_event_bus(Name=name)["Arn"]
        r.refs[logical] = name
        r.attrs[(logical, "Name")] = name
        r.attrs[(logical, "Arn")] = arn

    # The functions' environment, as the template gives it, where it can be resolved locally.
    globals_env = (
        ((template.get("Globals") or {}).get("Function") or {}).get("Environment") or {}
    ).get("Variables") or {}
    for key, value in globals_env.items():
        try:
            resolved = r.resolve(value)
        except Unresolved:
            continue  # e.g. SUNDIAL_PUBLIC_URL: the API's URL exists only on AWS
        if resolved is not NO_VALUE:
            env[key] = as_env(resolved)
    if stack is not None:
        stack.update(describe(template, r, sqs))
    return env


def of_kind(resources, kind):
    return [k for k, v in resources.items() if v.get("Type") == kind]


def lenient(r, node):
    """`node` resolved, with each part that only exists on AWS as None rather than an error."""
    try:
        return r.resolve(node)
    except Unresolved:
        pass
    if isinstance(node, list):
        return [lenient(r, item) for item in node]
    if isinstance(node, dict) and len(node) != 1:
        return {k: lenient(r, v) for k, v in node.items()}
    return None


def merge_globals(defaults, own):
    """A function's properties with Globals.Function merged in as SAM merges them: maps key by key
    (so a function's LoggingConfig.LogGroup keeps the global LogFormat), lists appended to the
    global ones, other values replaced by the function's."""
    out = dict(defaults)
    for key, value in own.items():
        base = out.get(key)
        if isinstance(base, dict) and isinstance(value, dict) and not is_intrinsic(base) and not is_intrinsic(value):
            out[key] = merge_globals(base, value)
        elif isinstance(base, list) and isinstance(value, list):
            out[key] = base + value
        else:
            out[key] = value
    return out


def is_intrinsic(node):
    return len(node) == 1 and next(iter(node)).startswith(("Fn::", "Ref", "Condition"))


def describe(template, r, sqs):
    """What a local emulator of the stack needs, resolved from the template: each function's
    binary, timeout, environment and event sources; the HTTP API's routes, integrations and
    authorizers; the queues' URLs and attributes. Read by crates/lambda-local."""
    resources = template.get("Resources") or {}
    defaults = (template.get("Globals") or {}).get("Function") or {}
    functions = {}
    for logical in of_kind(resources, "AWS::Serverless::Function"):
        res = resources[logical]
        props = merge_globals(defaults, res.get("Properties") or {})
        variables = {
            **((defaults.get("Environment") or {}).get("Variables") or {}),
            **(((res.get("Properties") or {}).get("Environment") or {}).get("Variables") or {}),
        }
        environment, unresolved = {}, {}
        for key, value in variables.items():
            try:
                resolved = r.resolve(value)
            except Unresolved as e:
                unresolved[key] = str(e)
                continue
            if resolved is not NO_VALUE:
                environment[key] = as_env(resolved)
        functions[logical] = {
            "name": r.refs[logical],
            "binary": ((res.get("Metadata") or {}).get("BuildProperties") or {}).get("Binary"),
            "runtime": lenient(r, props.get("Runtime")),
            "architectures": lenient(r, props.get("Architectures", ["x86_64"])),
            "memory": lenient(r, props.get("MemorySize", 128)),
            "timeout": lenient(r, props.get("Timeout", 3)),
            "environment": environment,
            "unresolved": unresolved,
            "events": {
                name: {"type": event.get("Type"), "properties": lenient(r, event.get("Properties") or {})}
                for name, event in (props.get("Events") or {}).items()
            },
            "eventInvokeConfig": lenient(r, props.get("EventInvokeConfig") or {}),
            "loggingConfig": lenient(r, props.get("LoggingConfig") or {}),
            # `!If` entries whose condition is false drop out, as CloudFormation drops them.
            "policies": [p for p in lenient(r, props.get("Policies") or []) if p is not NO_VALUE and p is not None],
        }

    def active(logical):
        condition = resources[logical].get("Condition")
        return condition is None or r.condition(condition)

    def properties(kind):
        return {k: lenient(r, resources[k].get("Properties") or {}) for k in of_kind(resources, kind) if active(k)}

    integrations = {}
    for logical, props in properties("AWS::ApiGatewayV2::Integration").items():
        uri = (resources[logical].get("Properties") or {}).get("IntegrationUri")
        function = uri.get("Fn::GetAtt", [None])[0] if isinstance(uri, dict) else None
        integrations[logical] = {**props, "Function": function}
    queues = {}
    for logical in of_kind(resources, "AWS::SQS::Queue"):
        url = r.refs.get(logical)
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"]).get("Attributes", {})
        queues[logical] = {"url": url, "arn": attributes.get("QueueArn"), "attributes": attributes}
    return {
        "parameters": {k: as_env(v) for k, v in r.params.items()},
        "functions": functions,
        "routes": list(properties("AWS::ApiGatewayV2::Route").values()),
        "integrations": integrations,
        "authorizers": properties("AWS::ApiGatewayV2::Authorizer"),
        "queues": queues,
    }


# ----------------------------------------------------------------------------- the command


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="infra/moto.py", description="A local AWS stand-in for Sundial (moto server)."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start moto, create the template's resources, print the JSON line")
    up.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    up.add_argument("--prefix", default="sundial", help="resource name prefix (default: sundial)")
    up.add_argument("--region", default="us-east-1")
    up.add_argument("--template", default=DEFAULT_TEMPLATE, help="the SAM template (default: ../template.yaml)")
    up.add_argument("--create-only", action="store_true", help="create on --endpoint and exit")
    up.add_argument("--endpoint", help="with --create-only: the running moto server's URL")
    up.add_argument("--ignore-stdin", action="store_true", help="serve until SIGTERM/SIGINT, ignoring stdin")
    up.add_argument("--verbose", action="store_true", help="log moto's requests to stderr")
    up.add_argument(
        "--parameter", action="append", default=[], metavar="NAME=VALUE",
        help="a template parameter's value instead of its default (repeatable)",
    )
    up.add_argument(
        "--api-endpoint", metavar="URL",
        help="the HTTP API's URL (an API Gateway emulator's), for SUNDIAL_PUBLIC_URL",
    )
    up.add_argument(
        "--describe", action="store_true",
        help='add "stack" to the line: the functions, routes and queues, resolved (crates/lambda-local)',
    )
    args = parser.parse_args(argv)
    for item in args.parameter:
        if "=" not in item:
            parser.error(f"--parameter {item}: expected NAME=VALUE")
    if args.create_only and not args.endpoint:
        parser.error("--create-only needs --endpoint URL")
    if args.endpoint and not args.create_only:
        parser.error("--endpoint goes with --create-only")
    if not 0 <= args.port <= 65535:
        parser.error("--port: expected 0-65535")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}", args.prefix):
        parser.error("--prefix: expected 1-40 characters of A-Z, a-z, 0-9, '_', '-'")
    return args


def emit(endpoint, region, env, stack=None):
    line = {
        "endpoint": endpoint,
        "region": region,
        "env": {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_REGION": region,
            "AWS_DEFAULT_REGION": region,
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            **env,
        },
    }
    if stack is not None:
        line["stack"] = stack
    sys.stdout.write(json.dumps(line, sort_keys=True) + "\n")
    sys.stdout.flush()


def main(argv):
    args = parse_args(argv)
    template = load_template(args.template)
    extra = {
        "parameters": dict(item.split("=", 1) for item in args.parameter),
        "api_endpoint": args.api_endpoint,
        "stack": {} if args.describe else None,
    }

    if args.create_only:
        try:
            env = create(args.endpoint.rstrip("/"), args.region, args.prefix, template, **extra)
        except Exception as e:  # noqa: BLE001 - report any failure plainly
            fail(f"creating resources on {args.endpoint}: {e}", 1)
        emit(args.endpoint.rstrip("/"), args.region, env, extra["stack"])
        return 0

    def serialized(app):
        # moto's backends are not thread-safe: two DynamoDB transactions at once can fail with
        # "dictionary changed size during iteration" (a 500). AWS applies each request
        # atomically, so requests are handled one at a time here; Sundial never long-polls
        # (WaitTimeSeconds is 0), so none holds the lock for long.
        lock = threading.Lock()

        def call(environ, start_response):
            with lock:
                # The body is built inside the lock: moto does its work while it is produced.
                return list(app(environ, start_response))

        return call

    try:
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import make_server
    except ImportError as e:
        fail(f"moto server is not importable ({e}); install it with: pip install 'moto[server]'")

    import logging

    if not args.verbose:
        logging.getLogger("werkzeug").setLevel(logging.ERROR)

    stop = threading.Event()

    def on_signal(signum, _frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    started = time.monotonic()
    # What moto.server.ThreadedMotoServer does, except that the socket is bound here, in the main
    # thread, so a port in use is an error rather than a thread dying while start() waits forever.
    try:
        server = make_server(
            "127.0.0.1", args.port, serialized(DomainDispatcherApplication(create_backend_app)), threaded=True
        )
    except OSError as e:
        fail(f"starting moto on 127.0.0.1:{args.port}: {e}", 1)
    except SystemExit:  # werkzeug explains on stderr, then exits
        fail(f"starting moto on 127.0.0.1:{args.port}: the port is not available", 1)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    endpoint = f"http://127.0.0.1:{server.server_port}"

    def shut_down():
        server.shutdown()
        serving.join(5)
        server.server_close()

    try:
        env = create(endpoint, args.region, args.prefix, template, **extra)
    except SystemExit:
        shut_down()
        raise
    except Exception as e:  # noqa: BLE001
        shut_down()
        fail(f"creating resources on {endpoint}: {e}", 1)
    emit(endpoint, args.region, env, extra["stack"])
    print(
        f"infra/moto.py: moto on {endpoint} ready in {time.monotonic() - started:.2f}s; "
        + ("stop with SIGTERM or Ctrl-C" if args.ignore_stdin else "stops at EOF on stdin"),
        file=sys.stderr,
        flush=True,
    )

    if not args.ignore_stdin:

        def watch_stdin():
            # os.read on the raw descriptor: a daemon thread blocked inside sys.stdin's buffered
            # reader makes the interpreter abort at exit.
            try:
                while os.read(0, 65536):
                    pass
            except OSError:
                pass
            stop.set()

        threading.Thread(target=watch_stdin, daemon=True).start()

    while not stop.wait(1.0):
        pass
    shut_down()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
