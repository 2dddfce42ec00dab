# One image for every taskwire replica; its settings come from the environment (OH_*), so the
# same image runs under compose.yaml, plain `docker run`, or any orchestrator.
FROM python:3.11-slim

WORKDIR /app
COPY pyproject.toml setup.py README.md ./
COPY taskwire-client ./taskwire-client
COPY server ./server
# Built-in sub-agent types, plugins and demo scripts: the package carries them (setup.py maps
# config/ and plugins/ in), so they come before the install; ./config/taskwire.toml is read too.
COPY config ./config
COPY plugins ./plugins
RUN pip install --no-cache-dir ./taskwire-client . && useradd --create-home --uid 1000 taskwire \
    && mkdir -p /data/workspace && chown taskwire /data/workspace

USER taskwire
ENV OH_HOST=0.0.0.0 \
    OH_PORT=8000 \
    OH_WORKSPACE_PATH=/data/workspace \
    PYTHONUNBUFFERED=1
EXPOSE 8000
VOLUME ["/data/workspace"]
# Ready: the store answers and the bus delivers (GET /ready is 503 otherwise).
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/ready', timeout=3)"]
CMD ["taskwire", "serve"]
