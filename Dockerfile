# The Keel worker image (docker-compose.yml). Node 22: the pi-ai provider layer needs >= 22.19.
# Build stage: every dependency, then `npm run build` (dist/: compiled JS + the prebuilt workflow bundle).
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

# Runtime stage: production dependencies and dist/ only; runs the compiled worker as the unprivileged `node` user.
# bubblewrap sandboxes every tool process (it needs user namespaces: see docker-compose.yml's security_opt); each
# conversation gets a workspace of its own under /workspaces.
FROM node:22-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ripgrep fd-find bubblewrap ca-certificates && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production KEEL_WORKSPACE_ROOT=/workspaces
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY --from=build /app/dist ./dist
RUN mkdir -p /workspaces && chown node:node /workspaces && chmod 0700 /workspaces
USER node
CMD ["node", "dist/worker/main.js"]
