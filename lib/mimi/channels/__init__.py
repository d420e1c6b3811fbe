# Channels: the WebSocket gateway, Telegram, and the outbound dispatcher.
