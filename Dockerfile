# The Keel worker image (docker-compose.yml). Node 22: the pi-ai provider layer needs >= 22.19.
FROM node:22-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ripgrep fd-find ca-certificates && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY . .
ENV KEEL_WORKSPACE=/workspace
RUN mkdir -p /workspace
CMD ["npx", "tsx", "worker/main.ts"]
