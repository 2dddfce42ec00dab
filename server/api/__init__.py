"""The HTTP surface: REST, WebSocket, webhooks. ``create_app(settings)`` builds it."""
